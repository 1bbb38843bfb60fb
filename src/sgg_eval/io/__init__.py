"""File and process plumbing: all-or-nothing writes (``atomic``), sealed stores (``integrity``), JSON readers
(``jsonio``, ``jsonfast``), the ZIP index (``zipindex``, ``member_crcs``), parsing in a forked child
(``isolated``) and the allocator settings of a run (``allocator``). Knows no scene graph."""
