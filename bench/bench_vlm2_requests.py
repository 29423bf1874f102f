"""Time and peak memory to build every VLM2-Bench request for a full-size synthetic release.

Writes a synthetic release in the official layout (3,060 records: the paper's per-subtask counts, 2-4
images per image record, 640x480 JPEGs written once and referenced by path, one short video per PC-VID
record), then does what lmms-eval does before inference: each of the 9 tasks' data loader (`custom_dataset`) and
`doc_to_messages` for every document, materialising each document's images (or video frames) and
dropping them. Each configuration runs in a fresh child process so peak RSS is its own; it runs once with
2 images per record and once with 4, to show memory does not grow with the image count.

    python bench/bench_vlm2_requests.py [--work DIR] [--encode] [--distinct]

`--encode` also encodes every image to a base64 PNG data URL as lmms-eval's OpenAI backend would.
`--distinct` gives every record its own image files (distinct bytes: photo-like JPEGs from a pool of 32,
each copy carrying its own comment segment), as a real release has, instead of 16 shared files: every
image is then decoded at load, and "load s (cached)" is a second load served by the media cache.
Targets: under 30 s and under 2 GiB per configuration; the load (`load s`) at most 1.5x the figure before
images were fully decoded at load (issue 22).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COUNTS = {
    "gc_mat": 520,
    "gc_trk": 440,
    "oc_cpr": 720,
    "oc_cnt": 360,
    "oc_grp": 200,
    "pc_cpr": 400,
    "pc_cnt": 120,
    "pc_grp": 100,
    "pc_vid": 200,
}
IMAGE_DIRS = {"gc": "data/gc/processed", "oc": "data/oc/original_obj", "pc": "data/pc/image/picks_face"}
N_DISTINCT_IMAGES = 16


def photo_like_jpegs(count: int) -> list[bytes]:
    """640x480 JPEGs of smoothed noise (they decode about as slowly as photographs)."""
    import io

    import numpy as np
    from PIL import Image, ImageFilter

    rng = np.random.default_rng(0)
    out = []
    for _ in range(count):
        noise = Image.fromarray(rng.integers(0, 255, (480, 640, 3), dtype=np.uint8)).filter(ImageFilter.GaussianBlur(2))
        buffer = io.BytesIO()
        noise.save(buffer, "JPEG", quality=85)
        out.append(buffer.getvalue())
    return out


def with_comment(jpeg: bytes, text: str) -> bytes:
    """The same image with a JPEG comment segment after SOI: same pixels, distinct bytes."""
    payload = text.encode()
    return jpeg[:2] + b"\xff\xfe" + (len(payload) + 2).to_bytes(2, "big") + payload + jpeg[2:]


def write_release(root: Path, images_per_record: int, distinct: bool = False) -> None:
    from lmms_tasks.utils.testing.media import make_image, write_video

    pool = photo_like_jpegs(32) if distinct else []
    for rel in IMAGE_DIRS.values():
        folder = root / rel
        folder.mkdir(parents=True, exist_ok=True)
        for k in range(N_DISTINCT_IMAGES):
            make_image(k, (640, 480)).save(folder / f"img_{k}.jpg", quality=90)
    for subtask, count in COUNTS.items():
        family = subtask.split("_")[0]
        rows = []
        if subtask == "pc_vid":
            sources = {"AB": root / "_src_ab.mp4", "ABA": root / "_src_aba.mp4"}
            write_video(sources["AB"], [1, 2], seconds_per_colour=5, fps=10, size=(640, 480))
            write_video(sources["ABA"], [1, 2, 1], seconds_per_colour=4, fps=10, size=(640, 480))
            (root / "data/pc/video/UNI").mkdir(parents=True, exist_ok=True)
            for i in range(count):
                vid = f"UNI_{'ABA' if i % 2 else 'AB'}_{i:04d}"
                os.link(sources["ABA" if i % 2 else "AB"], root / "data/pc/video/UNI" / f"{vid}.mp4")
                rows.append(
                    {
                        "vid": vid,
                        "question": "Give a comprehensive description of the whole video, prioritizing details about the individuals.",
                    }
                )
            path = root / "jsonl/pc/vallina/pc_v_open-ended.jsonl"
        else:
            for i in range(count):
                images = [f"img_{(i + k) % N_DISTINCT_IMAGES}.jpg" for k in range(images_per_record)]
                if distinct:
                    images = [f"{subtask}_{i}_{k}.jpg" for k in range(images_per_record)]
                    for k, name in enumerate(images):
                        (root / IMAGE_DIRS[family] / name).write_bytes(with_comment(pool[(i + k) % len(pool)], name))
                row = {
                    "q_id": f"{i // 2}_{'pn'[i % 2]}",
                    "question": f"Question {i} about these images?",
                    "gt_answer": "T",
                    "images": images,
                }
                if subtask.endswith("cnt"):
                    row.update(gt_answer=2, image_seq_len=images_per_record)
                rows.append(row)
            path = root / "jsonl" / family / "vanilla" / f"{subtask}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def build_all(encode: bool) -> dict[str, float]:
    """Each loader + doc_to_messages for every document; returns counts and timings."""
    from lmms_tasks.utils.vlm2_bench import SUBTASKS, hooks

    # Only the requests are built: nothing is judged, so PC-VID's loader skips the judge's preflight.
    os.environ["LMMS_TASKS_JUDGE_PREFLIGHT"] = "0"

    encoder = None
    if encode:
        from lmms_eval.protocol import ChatMessages

        encoder = ChatMessages
    started = time.perf_counter()
    cpu_started = time.process_time()
    docs = images = frames = 0
    video_wall = load_wall = 0.0
    for subtask in SUBTASKS:
        subtask_started = time.perf_counter()
        dataset = hooks.dataset_for(f"vlm2_bench_{subtask}")()["test"]
        load_wall += time.perf_counter() - subtask_started
        for doc in dataset:
            messages = hooks.doc_to_messages(doc)
            visuals = [part["url"] for part in messages[0]["content"] if part["type"] == "image"]
            for image in visuals:
                image.load()
            if encoder is not None:
                encoder(messages=messages).to_openai_messages()
            docs += 1
            if subtask == "pc_vid":
                frames += len(visuals)
            else:
                images += len(visuals)
            del messages, visuals
        if subtask == "pc_vid":
            video_wall = time.perf_counter() - subtask_started
    wall = time.perf_counter() - started
    return {
        "docs": docs,
        "images": images,
        "video_frames": frames,
        "wall_s": wall,
        "video_wall_s": video_wall,
        "load_wall_s": load_wall,
        "cpu_s": time.process_time() - cpu_started,
    }


def cached_load(work: Path) -> float:
    """The loaders alone again, in a fresh process state but with the media cache the first load filled."""
    from lmms_tasks.utils.services import schema
    from lmms_tasks.utils.vlm2_bench import SUBTASKS, hooks

    for state in ("_verified", "_indexed"):  # only the on-disk cache may help, as for another rank or run
        getattr(schema, state, set()).clear()
    started = time.perf_counter()
    for subtask in SUBTASKS:
        hooks.dataset_for(f"vlm2_bench_{subtask}")()
    return time.perf_counter() - started


def child(work: Path, images_per_record: int, encode: bool, distinct: bool) -> None:
    root = work / f"release_{images_per_record}{'_distinct' if distinct else ''}"
    if not (root / "jsonl").is_dir():
        write_release(root, images_per_record, distinct)
    os.environ["VLM2_BENCH_DATA"] = str(root)
    os.environ["LMMS_TASKS_MEDIA_CACHE_DIR"] = tempfile.mkdtemp(prefix="media_cache_", dir=work)  # a first load
    stats = build_all(encode)
    stats["cached_load_wall_s"] = cached_load(work)
    stats["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    stats["images_per_record"] = images_per_record
    print(json.dumps(stats))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=None, help="where to write the synthetic release (default: a temp dir)")
    parser.add_argument("--encode", action="store_true", help="also encode images as lmms-eval's OpenAI backend does")
    parser.add_argument("--distinct", action="store_true", help="every record gets its own image files (as a real release)")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="vlm2_bench_bench_"))
    if args.child is not None:
        child(work, args.child, args.encode, args.distinct)
        return 0
    print(f"synthetic release under {work}; {sum(COUNTS.values())} records")
    print(
        f"{'imgs/record':>11} {'docs':>6} {'images':>7} {'frames':>7} {'wall s':>8} {'load s':>7} {'cached':>7} {'images s':>9} {'video s':>8} {'CPU s':>7} {'peak RSS MiB':>13}"
    )
    for n in (2, 4):
        cmd = [sys.executable, __file__, "--work", str(work), "--child", str(n)] + (["--encode"] if args.encode else []) + (["--distinct"] if args.distinct else [])
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        s = json.loads(out)
        print(
            f"{n:>11} {s['docs']:>6} {s['images']:>7} {s['video_frames']:>7} {s['wall_s']:>8.2f} {s['load_wall_s']:>7.2f} {s['cached_load_wall_s']:>7.2f} {s['wall_s'] - s['video_wall_s']:>9.2f} {s['video_wall_s']:>8.2f} {s['cpu_s']:>7.2f} {s['peak_rss_mib']:>13.1f}"
        )
    print(f"load average now: {os.getloadavg()}  (the machine is shared; CPU s is the steadier figure)")
    print("targets: wall < 30 s, peak RSS < 2048 MiB, and flat between 2 and 4 images per record")
    return 0


if __name__ == "__main__":
    sys.exit(main())
