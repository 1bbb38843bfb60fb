"""Video scene graphs: Action Genome's files and the protocols of the video-SGG codebases (STTran and the papers
that copy its evaluator). A frame is an image; each keeps its video. ``docs/action_genome.md`` has every rule and
its source."""
