"""Backport: `custom_dataset` loaders, retried for network errors only, with `process_docs` outside the
retry (patches 0004-task-custom-dataset and 0004-task-load-retry-network-errors).

lmms-eval 0.7.3 can only load `dataset_path` through `datasets.load_dataset`, inside a `download()` that
tenacity retries 5 times on ANY exception, with `process_docs` inside it: a data error is re-run five times
and then wrapped in a RetryError. The patch adds `custom_dataset` (a callable returning the splits, as in
lm-evaluation-harness), retries only network errors and runs `process_docs` once, after loading. The shim
replaces `ConfigurableTask.download` for tasks that set `custom_dataset` (every lmms-tasks task); other
tasks keep 0.7.3's `download` unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lmms_tasks.utils.services.data import is_network_error

NAME = "datasets"
PATCHES = ("0004-task-custom-dataset", "0004-task-load-retry-network-errors")
ATTEMPTS = 5


def present() -> bool:
    from lmms_tasks.utils.compat import task_config

    return task_config.native("custom_dataset")


def load_splits(loader: Callable[..., Any], metadata: Any, dataset_kwargs: dict[str, Any] | None, wait_s: float = 2.0) -> Any:
    """Call the task's loader; retry it only for network errors (`ATTEMPTS` tries, `wait_s` apart)."""
    from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_fixed

    retrying = Retrying(stop=stop_after_attempt(ATTEMPTS), wait=wait_fixed(wait_s), retry=retry_if_exception(is_network_error), reraise=True)
    return retrying(lambda: loader(metadata=metadata or {}, **(dataset_kwargs or {})))


def without_media_columns(dataset: Any) -> Any:
    """A copy of the splits without image and audio columns (what lmms-eval keeps for `process_results`)."""
    from datasets import Audio, Image, Sequence

    copy = dataset.copy()
    for split in copy:
        features = copy[split].features
        media = [
            name
            for name, feature in features.items()
            if isinstance(feature, (Image, Audio)) or (isinstance(feature, Sequence) and isinstance(feature.feature, Image))
        ]
        if media:
            copy[split] = copy[split].remove_columns(media)
    return copy


def install() -> bool:
    import datasets
    from lmms_eval.api.task import ConfigurableTask

    original = ConfigurableTask.download

    def download(self: Any, dataset_kwargs: dict[str, Any] | None = None) -> None:
        config = self.config
        loader = getattr(config, "custom_dataset", None)
        if loader is None:
            return original(self, dataset_kwargs)
        self.dataset = datasets.DatasetDict(load_splits(loader, config.metadata, dataset_kwargs))
        if config.process_docs is not None:
            for split in list(self.dataset):
                if split in (config.training_split, config.validation_split, config.test_split, config.fewshot_split):
                    self.dataset[split] = config.process_docs(self.dataset[split])
        self.dataset_no_image = self.dataset if getattr(config, "process_results_use_image", False) else without_media_columns(self.dataset)
        return None

    download.__wrapped__ = original  # type: ignore[attr-defined]
    ConfigurableTask.download = download
    return True
