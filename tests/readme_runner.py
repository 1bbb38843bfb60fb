"""Running the README as written (issue 27), for the tests/test_readme*.py modules.

Every command in the README's `bash` blocks and every `sgg-eval ...` or `make ...` it quotes in the text is run
by one of those modules exactly as printed (:func:`sh` refuses a command the README does not hold), on
stand-ins for the user's own files (tests/readme_standins.py), or is listed in :data:`EXCUSED` with the reason.
Which commands the modules run is read from their source (:func:`commands_run`), not recorded while they run,
so the modules can run in different pytest-xdist workers and the check that nothing is left out
(tests/test_readme.py::test_every_readme_command_is_run_or_excused) does not wait for the others."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from reproduced import ACTIVE, ROOT, bash, ran_stages

README = (ROOT / "README.md").read_text()
EXCUSED = {
    "make test": "this test runs inside it",
    "make test-full": "the slow cases of `make test` at full size (hours)",
    "make test-fast": "the unit tests of `make test`, which runs them all",
    "make bench": "minutes of timing; tests/test_bench.py runs the bench",
    "sgg-eval evaluate FILE --task T -o OUT": "the command the bench times, with placeholders; tests/test_bench.py",
    "make fuzz N=10000": "the fuzzer's long form; `make test` runs 300 of its cases (tests/test_fuzz.py)",
    "dvc remote add -d shared /mnt/team/sgg-eval-cache": "a team's mount; tests/test_dvc_team.py pushes to a local "
    "remote and pulls into a fresh clone",
    "dvc push": "as above",
    ".venv/bin/python stages/sweep.py -m hydra/launcher=submitit_local metrics.tau=0,0.5,1": (
        "submitit's local jobs outlive the test's time budget; the joblib launcher runs the same sweep in parallel"
    ),
    "sgg-eval params [overrides]": "syntax, not a command (the overrides are shown in the commands run here)",
    "sgg-eval COMMAND --help": "syntax; every command's --help: tests/test_cli.py",
    "sgg-eval evaluate": "a command's name in the text",
    "sgg-eval evaluate --psg": "a command's name in the text",
    "sgg-eval s2g": "a command's name in the text",
    "make install-s2g": "`make s2g-example` (run here) and `make test` install the extra through the same target",
    "sgg-eval s2g --train T --val V --test TEST --captions vg_capgraphs_anno.json -o s2g.json": (
        "placeholders for real files; `make s2g-example` runs the same command on generated ones"
    ),
    "sgg-eval params s2g.run=true": "the switch; tests/test_pipeline.py turns it on, checks stage, table and runs",
    "make serve-admin": "it asks for a password; tests/test_service.py makes the admin with the same Django command "
    "(createsuperuser --noinput)",
    "export SGG_EVAL_SERVER=http://127.0.0.1:8000 SGG_EVAL_TOKEN=sgg_...": "a token's placeholder; "
    "tests/test_service.py sets both to the service it started and a token it made on the tokens page",
    "sgg-eval submit service/simulated/outputs/sim_motifs_baseline_predcls.h5 --benchmark vg150-sim-predcls "
    "--public --wait": "the service's folder is the test's own; tests/test_service.py submits that file with those "
    "options",
}
# run verbatim, but not through sh()
RUN_OTHERWISE = {
    "make repro": "tests/reproduced.py runs it in the fresh clone every README module copies",
    ". .venv/bin/activate": "sh(..., active=True): the commands after it run in the activated shell",
    "make ui": "tests/test_readme.py::test_mlflow_ui_serves_the_runs starts it and reads its page",
    "make serve": "tests/test_service.py starts it (its port and folder from PORT and SERVICE_HOME) and uses it",
    "make test-paper-fit": ".ci/run runs it after `make test` (tests/test_simulated_models.py at the pipeline's scale)",
}


def readme_commands(text: str = README) -> list[str]:
    """Each command of the README's bash blocks (comments dropped, continued lines joined) and each inline
    `sgg-eval ...` and `make ...`, whitespace collapsed, in order, once."""
    found = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"(^|\s)#.*$", "", line).strip()
            if line:
                found.append(line)
    found += re.findall(r"`((?:sgg-eval|make) [^`]+)`", text)
    return list(dict.fromkeys(re.sub(r"\s+", " ", c) for c in found))


def sh(command: str, cwd: Path, active: bool = False, timeout: float = 1200, env: dict | None = None) -> str:
    """Run a README command verbatim in bash (``active``: as with `. .venv/bin/activate`); its output."""
    assert command in readme_commands(), f"not (or no longer) in the README: {command}"
    status, stdout, stderr = bash(command, cwd, {**(ACTIVE if active else {}), **(env or {})}, timeout)
    assert status == 0, f"{command}\n{stdout[-3000:]}{stderr[-3000:]}"
    return stdout + stderr


def stages_run(out: str) -> set[str]:
    return {s.split("@")[0] for s in ran_stages(out)}


def commands_run(folder: Path = ROOT / "tests") -> list[re.Pattern]:
    """What the README modules pass to :func:`sh`, each as a pattern: a literal command exactly, an f-string
    with any text where it formats a value (the audit's `--published "R@50=..."` numbers are the file's own)."""
    patterns = []
    for module in sorted(folder.glob("test_readme*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "sh" and node.args):
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                patterns.append(re.compile(re.escape(first.value)))
            elif isinstance(first, ast.JoinedStr):
                parts = [re.escape(v.value) if isinstance(v, ast.Constant) else ".+" for v in first.values]
                patterns.append(re.compile("".join(parts)))
    return patterns
