"""Security checks of one RAG trace: pure, cheap, judge-free functions over plain inputs.

- `acl.leaked_doc_ids(principal_groups, docs)`: retrieved documents the querying principal may not read (exact).
- `injection.injection_findings(text)` and `injection.is_injection(text)`: instructions aimed at the model inside
  retrieved text, with quoted or discussed phrases told apart (a heuristic; word lists in `cues`).
- `pii.pii_kinds(answer, documents)`: kinds and counts of personal data in the answer that no document holds
  (check-digit validated where a check exists; phones in `phones` are a heuristic). Never the values.
- `credentials.credential_kinds(answer, documents)`: kinds and counts of credentials (API keys, tokens, private keys,
  passwords) in the answer that no document holds (each by its published shape; stated passwords are a heuristic).
- `staleness.stale_doc_ids(docs, now, max_age_days)`: documents older than an application allows (exact).

None of them calls a judge, touches Redis or logs document text.
"""
