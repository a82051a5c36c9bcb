"""Configuration: settings from the environment, their defaults, Redis key names, judge prices, API keys."""
