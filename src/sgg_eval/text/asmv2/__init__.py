"""``--protocol asmv2``: ASMv2's open-ended PSG answers (``answers``), its questions (``questions``), its name and
box rules (``metrics``) and the evaluation (``evaluate``); it scores PSG."""
