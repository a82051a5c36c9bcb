"""The online path: production traces posted as they happen (POST /v1/traces), carried on a Redis Stream that
workers read in a consumer group, sampled per the app's policy, counted, and judged when sampled.

- `post`: the stream entry (one per POST) and the writes that accept it, built in the API;
- `records`: the per-trace record of sampled (and failed) traces, read by GET /v1/traces/{trace_id};
- `stream`: the consumer group's Redis operations (read, claim, refresh, acknowledge, lag);
- `process`: what a worker does with one post;
- `consumer`: the worker's loop over the stream.

Delivery is at least once and counting exactly once: a post is acknowledged, counted and deleted in one script, and
only the acknowledgement that finds it pending applies its counts.
"""
