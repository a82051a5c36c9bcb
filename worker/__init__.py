"""The RQ side of ragpulse: job functions and the worker entry point. Thin: the work is in ragpulse/."""
