"""Write a tape bundle (site_builder/run/tape.py) as the file the page loads on first use.

A bundle is JSON (the ops of each case, the inputs' names, what each output is) and one blob
of float64 constants (the parameters, a mask per T) in little-endian bytes, base64 inside the
same file. The file is a script that hands both to `playTape(id, bundle)`, the way the
precomputed choices are shipped (render_step.play_fragments): a `<script>` tag works from any
static host and from file://, where fetch does not. The script is one call with a JSON
literal: the replayer reads it as data and evaluates nothing in it.

Trade-off: float64 and base64 cost 8 x 4/3 bytes a number (a small trained model's weights
are tens of thousands of numbers); float32 would halve it, but the replay is checked equal
to NumPy to 1e-12, which float32 weights could not be.
"""
import base64
import json

import numpy as np


def tape_script(example_id: str, bundle: dict) -> bytes:
    """The file play/<example id>/tape.js: `playTape(id, {..., constants, data})`."""
    offsets, blobs, at = [], [], 0
    for arr in bundle["constants"]:
        arr = np.asarray(arr, dtype="<f8")          # ascontiguousarray would make a 0-d array 1-d
        offsets.append(dict(offset=at, shape=list(arr.shape)))
        blobs.append(arr.tobytes())
        at += arr.size
    payload = {k: v for k, v in bundle.items() if k != "constants"}
    payload["constants"] = offsets
    payload["blob"] = base64.b64encode(b"".join(blobs)).decode("ascii")
    text = json.dumps(payload, separators=(",", ":"), sort_keys=True, allow_nan=False)
    return f"playTape({json.dumps(example_id)},{text});\n".encode()
