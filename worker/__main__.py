"""Run an RQ worker for ragpulse: `python -m worker`."""

from worker.main import main

if __name__ == "__main__":
    main()
