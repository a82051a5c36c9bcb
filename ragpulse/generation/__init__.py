"""Synthetic eval datasets: an LLM writes candidate questions from corpus chunks, a second pass rejects those general
knowledge answers, those their passage does not answer and near-duplicates, and the retrieval filter sets aside
those the user's retriever cannot find. Imports neither Litestar nor RQ."""
