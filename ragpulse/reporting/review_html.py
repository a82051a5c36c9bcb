"""The review pages' frame: one stylesheet, the header, the login, index and message pages.

Server-rendered and self-contained like the report page: inline CSS, no script, no external URL. Every piece of
text that came from a client (queries, documents, answers, app names, reviewer names) goes through `escape`.
"""

from __future__ import annotations

from html import escape

CSS = """
:root { --ok: #1b7f3b; --warn: #b26a00; --bad: #b3261e; --muted: #5f6368; --line: #dadce0; --focus: #1a73e8; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #202124; margin: 0; }
header { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; padding: 10px 24px;
         border-bottom: 1px solid var(--line); background: #f8f9fa; }
header h1 { font-size: 18px; margin: 0; } header .meta { flex: 1; }
main { padding: 16px 24px 48px; max-width: 1400px; margin: 0 auto; }
h2 { font-size: 16px; margin: 18px 0 6px; } h3 { font-size: 14px; margin: 0 0 4px; }
.meta, .note { color: var(--muted); } .note { font-size: 13px; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; }
.review { display: grid; grid-template-columns: minmax(0, 1fr); gap: 0 32px; }
.review > * { min-width: 0; }
@media (min-width: 1100px) {
  .review { grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); grid-template-areas: "trace docs" "form docs"; }
  .trace { grid-area: trace; } .docs { grid-area: docs; } .answer-form, .result { grid-area: form; }
}
.doc { border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; margin: 8px 0; }
.doc h3 { overflow-wrap: anywhere; }
fieldset { border: 1px solid var(--line); border-radius: 6px; margin: 10px 0; padding: 8px 12px; min-width: 0; }
legend { font-weight: 600; padding: 0 4px; max-width: 100%; overflow-wrap: anywhere; }
.choices { display: flex; flex-wrap: wrap; gap: 4px 16px; }
.choices label { display: inline-flex; align-items: center; gap: 6px; padding: 4px 0; cursor: pointer; }
.field { display: block; margin: 10px 0; } .field span { display: block; font-weight: 600; margin-bottom: 2px; }
input[type=text], input[type=password], textarea { font: inherit; width: 100%; max-width: 36em; padding: 6px 8px;
  border: 1px solid #80868b; border-radius: 4px; }
textarea { min-height: 5em; }
button, .button { font: inherit; font-weight: 600; padding: 8px 16px; border-radius: 4px; border: 1px solid #1a73e8;
  background: #1a73e8; color: #fff; cursor: pointer; text-decoration: none; display: inline-block; }
button.quiet { background: #fff; color: #1a73e8; padding: 4px 12px; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
input[type=radio]:focus-visible { outline-offset: 1px; }
.error { background: #fce8e6; border: 1px solid var(--bad); border-radius: 6px; padding: 8px 12px; }
.banner { background: #e6f4ea; border: 1px solid var(--ok); border-radius: 6px; padding: 8px 12px; }
table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: 6px 8px; vertical-align: top; }
th { color: var(--muted); border-bottom: 1px solid var(--line); } tr + tr td { border-top: 1px solid #f1f3f4; }
td { overflow-wrap: anywhere; } td.you { overflow-wrap: normal; white-space: nowrap; }
.trace h3 { margin-top: 12px; }
.agree { color: var(--ok); font-weight: 600; } .differ { color: var(--bad); font-weight: 600; }
"""


def page(title: str, body: str, header: str = "") -> str:
    """A whole page: `title` is plain text (escaped here), `body` and `header` are markup built by this package."""
    return ("<!doctype html><html lang=en><head><meta charset=utf-8>"
            "<meta name=viewport content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(title)}</title><style>{CSS}</style></head><body>{header}<main>{body}</main></body></html>")


def header(app: str | None, tenant: str, csrf: str, can_log_out: bool) -> str:
    """The bar over every signed-in page: where the reviewer is, for which tenant, and the logout button."""
    where = f" · app <b>{escape(app)}</b>" if app else ""
    logout = (f"<form method=post action=\"/review/logout\">{csrf_field(csrf)}"
              "<button class=quiet type=submit>Log out</button></form>") if can_log_out else ""
    return (f"<header><h1>ragpulse review</h1><span class=meta>tenant <b>{escape(tenant)}</b>{where}</span>"
            f"{logout}</header>")


def csrf_field(token: str) -> str:
    return f"<input type=hidden name=csrf value=\"{escape(token)}\">"


def login_page(next_path: str, error: str | None = None) -> str:
    """The API-key form: posted, never put in a URL; the key is exchanged for a session cookie."""
    problem = f"<p class=error role=alert>{escape(error)}</p>" if error else ""
    return page("ragpulse review: log in", (
        "<h2>Log in to review traces</h2>"
        "<p class=note>Paste an API key of your tenant. It is checked once and exchanged for a session cookie; "
        "it is not stored in the browser.</p>" + problem +
        "<form method=post action=\"/review/login\">"
        f"<input type=hidden name=next value=\"{escape(next_path)}\">"
        "<label class=field for=api_key><span>API key</span>"
        "<input type=password id=api_key name=api_key required autocomplete=current-password autofocus></label>"
        "<button type=submit>Log in</button></form>"), header="<header><h1>ragpulse review</h1></header>")


def index_page(top: str) -> str:
    """Where a reviewer lands without an app: a form that opens one app's review page."""
    return page("ragpulse review", (
        "<h2>Which application?</h2><form method=get action=\"/review\">"
        "<label class=field for=app><span>App name</span><input type=text id=app name=app required "
        "pattern=\"[A-Za-z0-9._\\-]{1,64}\" autofocus></label><button type=submit>Review its traces</button></form>"),
        top)


def message_page(title: str, message: str, top: str, status_note: str = "") -> str:
    """A page that only says something: the empty queue, a trace that is gone."""
    note = f"<p class=note>{escape(status_note)}</p>" if status_note else ""
    return page(title, f"<h2>{escape(title)}</h2><p>{escape(message)}</p>{note}", top)
