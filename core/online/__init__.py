"""The lifelong online learner (truncated BPTT windows, discounted metrics, Sherman-Morrison)."""

from .learner import OnlineLearner
from .config import OnlineConfig

__all__ = ["OnlineConfig", "OnlineLearner"]
