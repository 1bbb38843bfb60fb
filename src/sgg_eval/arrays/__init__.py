"""NumPy helpers over many rows and segments at once (ragged arrays of many images, wide score matrices),
shared by the readers, the stores and the metrics; they know nothing of scene graphs."""
