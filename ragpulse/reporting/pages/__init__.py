"""The web UI's pages besides the report and review pages: the landing page, the job list, the compare page and
the app page.

Server-rendered and self-contained like the report page: one inline stylesheet (the review pages', imported, with a
few rules of its own), no script, no external URL; every client-given string goes through `escape`.
"""
