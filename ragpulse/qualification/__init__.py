"""Judge qualification: a labelled suite shipped with ragpulse, and the run that measures a judge on it.

A judge (a model and a prompt version) is measured here before its hallucination figures are shown as measured:
accuracy, sensitivity, specificity and Cohen's kappa with 95% intervals, per split and per failure class.

- `facts`, `templates`, `build_suite`: how the suite (suite/items.jsonl) is written, deterministically.
- `suite`: reads it. Every item has a split by a hash of its id: `held_out` items (about 30%) are never read while
  tuning a prompt; `tune` items may be. Report held_out figures as the judge's.
- `agreement`, `verdict`: the figures and the qualified / not_qualified decision with its documented floors.
- `runner`: judges every item with bounded concurrency; a judge error is counted as an error, never a verdict.
- `store`, `job`, `render`: the latest results per (judge, model, prompt version) in Redis (per tenant), the RQ job's body,
  and the text table.
"""
