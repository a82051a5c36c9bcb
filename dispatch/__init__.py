"""The RQ dispatch layer shared by the API and the workers: queues, the worker functions' dotted paths and RQ job
ids, and the enqueuing of chunk and callback jobs.

Both service/ and worker/ import it; it imports ragpulse and rq, never service or worker (tests/test_layout.py).
"""
