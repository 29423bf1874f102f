"""The only place that adapts to lmms-eval 0.7.3's behaviour."""
