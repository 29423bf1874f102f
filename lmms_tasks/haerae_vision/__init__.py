"""HAERAE-Vision task folder (YAML + thin hooks). Paper: https://arxiv.org/abs/2601.06165
Logic lives in `lmms_tasks.utils.haerae_vision`."""
