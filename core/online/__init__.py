"""The lifelong online learner (truncated BPTT windows, discounted metrics, Sherman-Morrison)."""

from .learner import OnlineLearner
from .state import OnlineConfig

__all__ = ["OnlineConfig", "OnlineLearner"]
