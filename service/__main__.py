"""Serve the API: `python -m service` (settings from the environment)."""

from __future__ import annotations

import logging
import sys

import uvicorn

from ragpulse.exceptions import ConfigError
from ragpulse.config.settings import Settings
from service.app import create_app


def main() -> None:
    """Validate settings, then serve with uvicorn until stopped."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        settings = Settings.from_env()
        app = create_app(settings)
    except ConfigError as exc:
        sys.exit(f"ragpulse api: {exc}")
    uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
