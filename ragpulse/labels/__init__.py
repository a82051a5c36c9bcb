"""Human labels of judged traces: the label store, the review design and queue, and judge agreement."""
