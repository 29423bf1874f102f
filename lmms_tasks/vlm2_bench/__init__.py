"""VLM2-Bench (ACL 2025, arXiv 2502.12084): 9 subtasks linking visual cues across images and video.
Task YAMLs and thin hooks only; the logic is in `lmms_tasks.utils.vlm2_bench`."""
