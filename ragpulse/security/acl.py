"""Access-control leaks at the retrieval layer: documents handed to a query whose principal may not read them.

Exact, not a heuristic: a document's `acl` is the list of groups allowed to read it, and a principal is the list of
groups the querying user belongs to. Group names are compared exactly (case-sensitive); there is no wildcard, so a
public document either has no acl or names a group that every principal carries.

What is not detected: leaks through the answer text alone (a fact copied from a document that was never
retrieved), and documents whose acl the client did not send.
"""

from __future__ import annotations

from collections.abc import Sequence


def leaked_doc_ids(principal_groups: Sequence[str] | None,
                   docs: Sequence[tuple[str, Sequence[str] | None]]) -> list[str]:
    """Ids of the retrieved documents the principal may not read, in retrieval order, each once.

    `docs` holds (doc_id, acl) pairs. A document leaks when it has an acl that shares no group with
    `principal_groups`; an empty acl (`[]`) means nobody may read it, so it always leaks. A document without an
    acl (None) is unrestricted and never leaks. With no principal (None) nothing can be judged and the result is
    empty: absence of evidence, not a clean bill. A document id listed several times (chunks) leaks when any of its
    chunks does.
    """
    if principal_groups is None:
        return []
    groups = frozenset(principal_groups)
    leaked = (doc_id for doc_id, acl in docs if acl is not None and groups.isdisjoint(acl))
    return list(dict.fromkeys(leaked))
