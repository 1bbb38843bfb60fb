"""Reports: per-predicate CSVs, paper tables, figures."""
