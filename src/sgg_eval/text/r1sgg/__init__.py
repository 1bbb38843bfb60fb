"""``--protocol r1sgg``: R1-SGG's answers (``answers``, ``gathered``), its GT rows (``rows``), its name tables
(``names``), its recall loop (``loop``), its detector AP (``box_ap``), the range its tied scores span (``ties``) and
the evaluation (``evaluate``)."""
