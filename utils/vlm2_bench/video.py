"""PC-VID frames: decode a video into the frames Qwen2.5-VL's official pipeline would see, as images.

The official inference passes `{"type": "video", "fps": 1, "max_pixels": 360*420}` to
`qwen_vl_utils.process_vision_info`. lmms-eval's backends turn videos into frame lists anyway, and on a
CPU install `qwen_vl_utils` cannot even be imported (it needs torchvision), so we decode with PyAV and
apply the same documented sampling rules ourselves:

- frame count: `total_frames / video_fps * fps`, clamped to [4, min(768, total_frames)] with both bounds
  rounded to multiples of 2, then floored to a multiple of 2 (FRAME_FACTOR); must lie in [2, total];
- frame indices: `linspace(0, total_frames - 1, n)` rounded (half to even);
- frame size: `smart_resize` with factor 28 (patch 14 x merge 2), min_pixels 128*28*28 and
  max_pixels = min(360*420, the per-frame budget), keeping the aspect ratio; bicubic resampling.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from PIL import Image

from lmms_tasks.utils.services.data import DataError

FPS = 1.0
MAX_PIXELS = 360 * 420
FRAME_FACTOR = 2
FPS_MIN_FRAMES = 4
FPS_MAX_FRAMES = 768
IMAGE_FACTOR = 28
VIDEO_MIN_PIXELS = 128 * IMAGE_FACTOR * IMAGE_FACTOR
VIDEO_MAX_PIXELS = 768 * IMAGE_FACTOR * IMAGE_FACTOR
VIDEO_TOTAL_PIXELS = 128000 * IMAGE_FACTOR * IMAGE_FACTOR * 0.9
MAX_RATIO = 200


def _round_by(x: float, f: int) -> int:
    return round(x / f) * f


def _ceil_by(x: float, f: int) -> int:
    return math.ceil(x / f) * f


def _floor_by(x: float, f: int) -> int:
    return math.floor(x / f) * f


def frame_count(total_frames: int, video_fps: float, fps: float = FPS) -> int:
    """How many frames the official pipeline samples from a video (qwen_vl_utils `smart_nframes`)."""
    min_frames = _ceil_by(FPS_MIN_FRAMES, FRAME_FACTOR)
    max_frames = _floor_by(min(FPS_MAX_FRAMES, total_frames), FRAME_FACTOR)
    n = total_frames / video_fps * fps
    n = min(min(max(n, min_frames), max_frames), total_frames)
    n = _floor_by(n, FRAME_FACTOR)
    if not FRAME_FACTOR <= n <= total_frames:
        raise ValueError(
            f"cannot sample frames: {n} not in [{FRAME_FACTOR}, {total_frames}] (video of {total_frames} frames at {video_fps} fps)"
        )
    return n


def frame_indices(total_frames: int, n: int) -> list[int]:
    return [int(i) for i in np.linspace(0, total_frames - 1, n).round()]


def smart_resize(
    height: int, width: int, factor: int = IMAGE_FACTOR, min_pixels: int = VIDEO_MIN_PIXELS, max_pixels: float = MAX_PIXELS
) -> tuple[int, int]:
    """(height, width), both multiples of `factor`, pixel count within [min_pixels, max_pixels]."""
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise ValueError(f"aspect ratio above {MAX_RATIO}: {width}x{height}")
    h_bar = max(factor, _round_by(height, factor))
    w_bar = max(factor, _round_by(width, factor))
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = _floor_by(height / beta, factor)
        w_bar = _floor_by(width / beta, factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = _ceil_by(height * beta, factor)
        w_bar = _ceil_by(width * beta, factor)
    return h_bar, w_bar


def frame_pixel_budget(n_frames: int, max_pixels: float = MAX_PIXELS) -> float:
    """The per-frame max_pixels qwen_vl_utils ends up using for a video of `n_frames` sampled frames."""
    budget = max(min(VIDEO_MAX_PIXELS, VIDEO_TOTAL_PIXELS / n_frames * FRAME_FACTOR), int(VIDEO_MIN_PIXELS * 1.05))
    return min(max_pixels, budget)


def sample_frames(path: str | Path, fps: float = FPS, max_pixels: float = MAX_PIXELS) -> list[Image.Image]:
    """The sampled, resized RGB frames of a video, in temporal order."""
    import av

    try:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"  # frame/slice threads in FFmpeg (outside the GIL); same frames
            video_fps = float(stream.average_rate or stream.guessed_rate or 0)
            total = int(stream.frames or 0)
            if total <= 0:  # container without a frame count: count by decoding once
                total = sum(1 for _ in container.decode(stream))
                container.seek(0)
            if total <= 0 or video_fps <= 0:
                raise DataError(f"video {path}: no decodable frames (frames={total}, fps={video_fps})")
            n = frame_count(total, video_fps, fps)
            wanted = frame_indices(total, n)
            picked: dict[int, Image.Image] = {}
            needed = set(wanted)
            for index, frame in enumerate(container.decode(stream)):
                if index in needed:
                    picked[index] = frame.to_image().convert("RGB")
                if index >= wanted[-1]:
                    break
    except (av.error.FFmpegError, OSError, ValueError) as exc:
        raise DataError(f"video {path}: cannot decode ({exc})") from exc
    missing = [i for i in wanted if i not in picked]
    if missing:  # fewer decodable frames than the container claims: reuse the last decoded one
        if not picked:
            raise DataError(f"video {path}: no frame decoded")
        last = picked[max(picked)]
        for i in missing:
            picked[i] = last
    first = picked[wanted[0]]
    height, width = smart_resize(first.height, first.width, max_pixels=frame_pixel_budget(n, max_pixels))
    return [picked[i].resize((width, height), Image.BICUBIC) for i in wanted]
