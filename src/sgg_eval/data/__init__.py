"""Data model, stores, dataset readers and the simulator."""
