"""The API reference page at /schema: rendered here from the OpenAPI document, with nothing loaded from elsewhere.

Litestar's stock pages (Redoc, Swagger, ...) pull scripts and fonts from CDNs: blank offline, and every visit tells
a third party that this self-hosted service exists. This page is plain HTML built on the server from the same JSON
that /schema/openapi.json serves, with inline CSS and no script; its Content-Security-Policy forbids loading any
resource, so a later edit cannot quietly add one.
"""

from __future__ import annotations

import html
import json
from typing import Any

import msgspec
from litestar import Request
from litestar.openapi.plugins import JsonRenderPlugin, OpenAPIRenderPlugin

JSON_PATH = "/openapi.json"
"""Where the OpenAPI document is served, under the OpenAPI path (/schema)."""

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
_CONSTRAINTS = {
    "minLength": "length ≥ {}", "maxLength": "length ≤ {}", "minItems": "≥ {} items", "maxItems": "≤ {} items",
    "minimum": "≥ {}", "maximum": "≤ {}", "exclusiveMinimum": "> {}", "exclusiveMaximum": "< {}",
    "pattern": "matches {}", "format": "format {}",
}
_STYLE = """
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:72rem;padding:1rem 2rem;
color:#1d232a;background:#fff}
h1{margin-bottom:0}h2{border-bottom:2px solid #dde3ea;padding-bottom:.25rem;margin-top:2.5rem}
h3{margin:1.75rem 0 .25rem;font-size:1.05rem}code,.type{font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
table{border-collapse:collapse;width:100%;margin:.5rem 0}th,td{border:1px solid #dde3ea;padding:.3rem .5rem;
text-align:left;vertical-align:top}th{background:#f4f6f8;font-weight:600}
.m{display:inline-block;min-width:3.5rem;text-align:center;border-radius:4px;padding:0 .4rem;color:#fff;
font:600 12px/1.6 ui-monospace,monospace;text-transform:uppercase;margin-right:.5rem}
.get{background:#2b7bb9}.post{background:#2e8540}.put{background:#a36a00}.delete{background:#b52a2a}
.patch{background:#6f42c1}.muted{color:#5c6670}.req{color:#b52a2a;font-size:12px}a{color:#1f5fa0}
nav ul{columns:2;padding-left:1.2rem}section.op{border-left:3px solid #dde3ea;padding-left:1rem;margin:1.5rem 0}
"""


class ApiDocsPlugin(OpenAPIRenderPlugin):
    """Serves the self-contained reference page (the OpenAPI root, /schema)."""

    def __init__(self, *, path: str = "/") -> None:
        super().__init__(path=path, favicon="", style="")

    def render(self, request: Request, openapi_schema: dict[str, Any]) -> bytes:
        """The page, from the same JSON /schema/openapi.json serves."""
        spec = msgspec.json.decode(self.render_json(request, openapi_schema))
        return render_page(spec, self.get_openapi_json_route(request)).encode()


def render_plugins() -> list[OpenAPIRenderPlugin]:
    """The OpenAPI JSON document and the reference page; no CDN-backed page is served."""
    return [ApiDocsPlugin(), JsonRenderPlugin(path=JSON_PATH)]


def render_page(spec: dict[str, Any], json_url: str) -> str:
    """The whole HTML page for an OpenAPI document."""
    info = spec.get("info", {})
    title = f"{info.get('title', 'API')} {info.get('version', '')}".strip()
    operations = [(path, method, op) for path, item in spec.get("paths", {}).items()
                  for method, op in item.items() if method in _METHODS]
    schemas = spec.get("components", {}).get("schemas", {})
    by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for path, method, op in operations:
        by_tag.setdefault((op.get("tags") or ["other"])[0], []).append((path, method, op))
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<meta http-equiv='Content-Security-Policy' content=\"{_CSP}\">",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        "<link rel='icon' href='data:,'>",
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f"<p class='muted'>OpenAPI {_e(spec.get('openapi', ''))} document: <a href='{_e(json_url)}'>"
        f"<code>{_e(json_url)}</code></a>. Errors are RFC 9457 problem details "
        "(<code>application/problem+json</code>).</p>",
        _markdown(info.get("description", "")),
        "<nav><h2>Endpoints</h2><ul>",
        *(f"<li><a href='#{_anchor(method, path)}'><span class='m {method}'>{method}</span><code>{_e(path)}</code>"
          f"</a> <span class='muted'>{_inline(op.get('summary', ''))}</span></li>" for path, method, op in operations),
        f"</ul><p><a href='#schemas'>Schemas</a> ({len(schemas)})</p></nav>",
    ]
    for tag, tagged in by_tag.items():
        parts.append(f"<h2>{_e(tag)}</h2>")
        parts += [_operation(path, method, op) for path, method, op in tagged]
    parts.append("<h2 id='schemas'>Schemas</h2>")
    parts += [_schema_section(name, schema) for name, schema in schemas.items()]
    parts.append("</body></html>")
    return "\n".join(parts)


def _operation(path: str, method: str, op: dict[str, Any]) -> str:
    parts = [f"<section class='op' id='{_anchor(method, path)}'>",
             f"<h3><span class='m {method}'>{method}</span><code>{_e(path)}</code></h3>",
             f"<p><strong>{_inline(op.get('summary', ''))}</strong></p>", _markdown(op.get("description", ""))]
    if params := op.get("parameters"):
        parts.append("<table><tr><th>parameter</th><th>in</th><th>type</th><th>description</th></tr>")
        parts += [f"<tr><td><code>{_e(p['name'])}</code>{_required(p.get('required'))}</td><td>{_e(p.get('in'))}</td>"
                  f"<td>{_type(p.get('schema', {}))}</td><td>{_inline(p.get('description', ''))}</td></tr>"
                  for p in params]
        parts.append("</table>")
    if body := op.get("requestBody"):
        parts.append(f"<p>Request body{_required(body.get('required'))}: {_content(body.get('content', {}))}"
                     f" <span class='muted'>{_inline(body.get('description', ''))}</span></p>")
    if responses := op.get("responses"):
        parts.append("<table><tr><th>status</th><th>description</th><th>body</th></tr>")
        parts += [f"<tr><td>{_e(code)}</td><td>{_inline(r.get('description', ''))}</td>"
                  f"<td>{_content(r.get('content', {}))}</td></tr>" for code, r in responses.items()]
        parts.append("</table>")
    parts.append("</section>")
    return "\n".join(parts)


def _schema_section(name: str, schema: dict[str, Any]) -> str:
    parts = [f"<section id='schema-{_e(name)}'><h3>{_e(name)}</h3>", _markdown(schema.get("description", ""))]
    properties = schema.get("properties")
    if properties:
        required = set(schema.get("required", ()))
        parts.append("<table><tr><th>field</th><th>type</th><th>default</th><th>description</th></tr>")
        parts += [f"<tr><td><code>{_e(field)}</code>{_required(field in required)}</td><td>{_type(sub)}</td>"
                  f"<td>{_default(sub)}</td><td>{_inline(sub.get('description', ''))}</td></tr>"
                  for field, sub in properties.items()]
        parts.append("</table>")
        if schema.get("additionalProperties") is False:
            parts.append("<p class='muted'>Unknown fields are rejected.</p>")
    else:
        parts.append(f"<p>{_type(schema)}</p>")
    parts.append("</section>")
    return "\n".join(parts)


def _content(content: dict[str, Any]) -> str:
    return "; ".join(f"<code>{_e(media)}</code> {_type(c.get('schema', {}))}" for media, c in content.items())


def _type(schema: Any) -> str:
    """A one-line HTML rendering of a JSON schema: refs as links, unions, arrays, maps, enums and constraints."""
    if not isinstance(schema, dict) or not schema:
        return "<span class='type'>any</span>"
    if ref := schema.get("$ref"):
        name = ref.rsplit("/", 1)[-1]
        return f"<a class='type' href='#schema-{_e(name)}'>{_e(name)}</a>"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " | ".join(_type(member) for member in schema[key])
    if "allOf" in schema:
        return " &amp; ".join(_type(member) for member in schema["allOf"])
    if "const" in schema:
        return f"<code>{_e(json.dumps(schema['const']))}</code>"
    if "enum" in schema:
        return " | ".join(f"<code>{_e(json.dumps(v))}</code>" for v in schema["enum"])
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        text = " | ".join(_e(k) for k in kind)
    elif kind == "array":
        text = f"array of {_type(schema.get('items'))}"
    elif kind == "object" and isinstance(schema.get("additionalProperties"), dict) and not schema.get("properties"):
        text = f"object of {_type(schema['additionalProperties'])}"
    else:
        text = _e(kind)
    limits = [form.format(_e(schema[key])) for key, form in _CONSTRAINTS.items() if key in schema]
    suffix = f" <span class='muted'>({', '.join(limits)})</span>" if limits else ""
    return f"<span class='type'>{text}</span>{suffix}"


def _default(schema: dict[str, Any]) -> str:
    return f"<code>{_e(json.dumps(schema['default']))}</code>" if "default" in schema else ""


def _required(required: Any) -> str:
    return " <span class='req'>required</span>" if required else ""


def _markdown(text: str) -> str:
    """Descriptions as escaped paragraphs (backticks become code); no markup passes through."""
    paragraphs = [p.strip() for p in text.split("\n\n") if p.strip()]
    return "".join(f"<p>{_code_spans(_e(p))}</p>" for p in paragraphs)


def _inline(text: str) -> str:
    """A one-line description, escaped, its backticks made code: never shown literally."""
    return _code_spans(_e(text))


def _code_spans(text: str) -> str:
    pieces = text.split("`")
    if len(pieces) % 2 == 0:
        return text
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(pieces))


def _anchor(method: str, path: str) -> str:
    return f"op-{method}-" + "".join(c if c.isalnum() else "-" for c in path).strip("-")


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)
