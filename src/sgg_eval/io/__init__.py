"""File and process plumbing: all-or-nothing writes (``atomic``), sealed stores and the CRC-32 (``integrity``),
JSON readers (``jsonio``, ``jsonfast``), the one ZIP reader (``archive``, over the directory index ``zipindex``
and the storages' checks ``member_crcs``), every process sgg-eval starts (``processes``) and the allocator
settings of a run (``allocator``). Knows no scene graph."""
