"""A NumPy transformer with every forward and backward pass written by hand.

Modules, one job each:
  config       the dataclasses that size a model and a training run
  ops          linear, relu, layer norm, softmax, cross-entropy, embeddings: forward/backward pairs
  attention    multi-head attention (self or cross, optional causal mask)
  transformer  the decoder-only pre-LN language model
  seq2seq      the 2017 post-LN encoder-decoder
  optim        AdamW, the decay rule, gradient clipping, learning-rate schedules
  data         character tokenizer, corpus, train/validation split, batches
  runs         run folders, atomic writes, signals and divergence, shared by both trainers
  train        the training loop, checkpoints, metrics
  generate     sampling text from a checkpoint
  gradcheck    central differences, for tests and the site's gradient-check tables
"""


class ModelInputError(ValueError):
    """Bad input to the model: raised before NumPy sees it, with a message that says how to fix it."""
