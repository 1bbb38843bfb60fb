"""``--protocol provision``: ProVision's answer text (``answers``), its answer lines (``rows``), its PSG-style GT
(``gt``), its SBERT name reader and scores (``metrics``) and the evaluation (``evaluate``); it scores PSG."""
