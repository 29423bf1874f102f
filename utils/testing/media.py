"""Small images and videos made on the fly for fixtures: each one visibly distinct (its colour and a
drawn index), so a test can tell from the stand-in server's log which image arrived where."""

from __future__ import annotations

import colorsys
from fractions import Fraction
from pathlib import Path

from PIL import Image, ImageDraw


def colour_for(index: int) -> tuple[int, int, int]:
    """A distinct, reproducible colour per index (golden-ratio hue walk)."""
    hue = (index * 0.618033988749895) % 1.0
    r, g, b = colorsys.hsv_to_rgb(hue, 0.65, 0.9)
    return int(r * 255), int(g * 255), int(b * 255)


def make_image(index: int, size: tuple[int, int] = (64, 48)) -> Image.Image:
    image = Image.new("RGB", size, colour_for(index))
    ImageDraw.Draw(image).text((4, 4), str(index), fill=(0, 0, 0))
    return image


def write_image(path: Path, index: int, size: tuple[int, int] = (64, 48)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    make_image(index, size).save(path)
    return path


def write_video(path: Path, colours: list[int], seconds_per_colour: int = 1, fps: int = 4, size: tuple[int, int] = (96, 64)) -> Path:
    """An H.264 MP4 showing each colour index for `seconds_per_colour` seconds (made with PyAV)."""
    import av
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height = size
        stream.pix_fmt = "yuv420p"
        stream.time_base = Fraction(1, fps)
        pts = 0
        for index in colours:
            frame_rgb = np.array(make_image(index, size), dtype=np.uint8)
            for _ in range(seconds_per_colour * fps):
                frame = av.VideoFrame.from_ndarray(frame_rgb, format="rgb24")
                frame.pts = pts
                pts += 1
                for packet in stream.encode(frame):
                    container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path
