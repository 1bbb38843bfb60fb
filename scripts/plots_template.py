"""Build an offline HTML template for `dvc plots show`: vega, vega-lite and vega-embed inlined from their npm
packages (pinned below), so the rendered page needs no CDN. Usage: plots_template.py OUT.html

DVC's own template loads the three libraries from a CDN; ours has no `{scripts}` placeholder, so DVC adds
nothing. The packages are fetched with `npm pack` into .cache/ (not committed).
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

PACKAGES = {
    "vega@5.30.0": "package/build/vega.min.js",
    "vega-lite@5.21.0": "package/build/vega-lite.min.js",
    "vega-embed@6.26.0": "package/build/vega-embed.min.js",
}

TEMPLATE = """<!DOCTYPE html>
<html>
<head>
    {refresh_tag}
    <meta charset="utf-8">
    <title>sgg-eval plots</title>
%s
    <style> body { font-family: sans-serif; } table { border-spacing: 15px; } img { max-width: 100%%; } </style>
</head>
<body>
    {plot_divs}
</body>
</html>
"""


def main(out: str) -> None:
    cache = Path(".cache/vega")
    cache.mkdir(parents=True, exist_ok=True)
    scripts = []
    for spec, member in PACKAGES.items():
        name, version = spec.rsplit("@", 1)
        tgz = cache / f"{name}-{version}.tgz"
        if not tgz.exists():
            subprocess.run(
                ["npm", "pack", spec, "--silent", "--pack-destination", str(cache)],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        with tarfile.open(tgz) as tf:
            js = tf.extractfile(member).read().decode("utf-8")
        js = js.replace("</script", "<\\/script")  # keep the inlined code from closing its own tag
        scripts.append(f"    <script>/* {spec} */\n{js}\n    </script>")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(TEMPLATE % "\n".join(scripts), encoding="utf-8")
    print(f"wrote {out} (offline: vega, vega-lite, vega-embed inlined)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".cache/plots_template.html")
