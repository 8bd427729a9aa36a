"""Parsing untrusted XML (URDF, SRDF, Collada) without DTDs, entities or network access.

The decision is taken on the parsed document, never on the raw text: a text search for
``<!DOCTYPE`` misses a document whose encoding declaration (``UTF-7``, ``UTF-16``) hides it,
while libxml2 decodes it and expands internal entities into attribute values. So lxml parses with
DTD loading, entity resolution, network access and decompression off, and a document that still
has a DOCTYPE (internal subset or not) or an entity reference is refused. A ``str`` is already
decoded: its encoding declaration is ignored (parsed as UTF-8); ``bytes`` keep their declared
encoding (or BOM), as a file's must.

Nothing a document names is ever opened. ``load_dtd=False`` alone does not guarantee it:
libxml2 still fetches an external subset (``<!DOCTYPE robot SYSTEM "/etc/passwd">``) or an
external parameter entity in some option combinations (lxml's ``collect_ids=False`` is one: a
FIFO named there hung the parser). Every parser therefore carries a resolver that refuses every
request before any file is touched (lxml consults it first for each external resource,
whatever the document's encoding), and the document is refused naming the resource.
"""

from __future__ import annotations

from typing import Any, Union

from .errors import RobotCollisionError

__all__ = ["parse_xml"]


def _lxml_major() -> int:
    try:
        from lxml import etree

        return int(etree.LXML_VERSION[0])
    except Exception:  # no lxml: parse_xml raises its own ImportError when called
        return 0


_LXML_HAS_DECOMPRESS = _lxml_major() >= 6


class _ExternalResource(Exception):
    """Raised by the refusing resolver; carries the URL the document named."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.url = url


def _refusing_resolver() -> Any:
    from lxml import etree

    class _Refuse(etree.Resolver):  # type: ignore[misc,unused-ignore]
        def resolve(self, url: Any, pubid: Any, context: Any) -> Any:
            raise _ExternalResource(str(url if url is not None else pubid))

    return _Refuse()


def _parser(huge_tree: bool, encoding: Union[str, None]) -> Any:
    from lxml import etree

    # ``decompress`` exists from lxml 6.0 on (off by default there); lxml 4.x/5.x (Humble's and
    # Jazzy's apt) never decompress input given as a string, which is all parse_xml passes
    extra: dict[str, Any] = {"decompress": False} if _LXML_HAS_DECOMPRESS else {}
    parser = etree.XMLParser(
        encoding=encoding,
        resolve_entities=False,
        load_dtd=False,
        dtd_validation=False,
        attribute_defaults=False,
        no_network=True,
        **extra,
        huge_tree=huge_tree,
        remove_comments=True,
        remove_pis=True,
        # collect_ids stays at its default (True): with False libxml2 loads the external subset
    )
    parser.resolvers.add(_refusing_resolver())
    return parser


def parse_xml(
    data: Union[str, bytes],
    what: str,
    error: type[RobotCollisionError],
    huge_tree: bool = False,
) -> Any:
    """Root element of the XML document ``data``; raises ``error`` naming ``what`` when it is not
    well-formed or declares a DOCTYPE or entities.

    ``huge_tree`` lifts libxml2's depth and text-node limits (for mesh files, whose size the
    caller has already capped)."""
    from lxml import etree

    if isinstance(data, str):
        raw, encoding = data.encode("utf-8"), "utf-8"
    elif isinstance(data, (bytes, bytearray, memoryview)):
        raw, encoding = bytes(data), None
    else:
        raise error(f"{what} must be XML text or bytes, got {type(data).__name__}")
    try:
        root = etree.fromstring(raw, parser=_parser(huge_tree, encoding))
    except _ExternalResource as exc:
        raise error(
            f"{what} names the external resource {exc.url[:200]!r} (a DOCTYPE with SYSTEM or "
            "PUBLIC, or an external entity); it was not opened: external DTDs and entities are "
            "refused for safety, remove the DOCTYPE"
        ) from None
    except etree.XMLSyntaxError as exc:
        reason = str(exc) or "no reason given"
        if "amplification" in reason or "entity" in reason.lower():
            reason += " (DOCTYPE and entities are refused for safety; remove them)"
        raise error(f"{what} is not well-formed XML: {reason}") from None
    except (ValueError, LookupError) as exc:  # e.g. an unknown encoding declaration
        raise error(f"{what} cannot be parsed as XML: {exc}") from None
    if root is None:
        raise error(f"{what} has no root element")
    docinfo = root.getroottree().docinfo
    if docinfo.doctype or docinfo.internalDTD is not None or docinfo.externalDTD is not None:
        raise error(
            f"{what} declares a DOCTYPE ({docinfo.doctype or 'internal subset'}), which is "
            "refused for safety (entities could rewrite the document); remove it"
        )
    for _ in root.iter(etree.Entity):
        raise error(f"{what} contains entity references, which are refused for safety; remove them")
    return root
