"""A two-layer MLP classifier in NumPy, written for the site builder's test suite.

It is the second package the site builder documents (tests/test_second_package.py): a
classifier of fixed-size rows, small enough to read in one sitting, built on the convention
the builder reads: every `x_forward` returns `(out, cache)`, every `x_backward(dout, cache,
...)` returns the gradients, and `init_params(cfg, rng)` returns the parameters by name.
"""
