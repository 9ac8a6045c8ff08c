"""The classifier's one config. The sizes are pairwise different at the default, so that
every axis of every array says which size it is."""
from dataclasses import dataclass


@dataclass(frozen=True)
class MLPConfig:
    batch: int = 6              # examples per step, B
    n_in: int = 4               # features per example, D
    n_hidden: int = 8           # hidden units, H
    n_classes: int = 3          # classes, C
    lr: float = 0.5             # the step size of train_step
    weight_decay: float = 1e-3  # added to the gradient of each weight matrix, times the weight
