#!/usr/bin/env python3
"""Synthesise the two bundled thinkterm-sidecar sounds with the Python standard library only.

done.wav    - a soft rising two-note chime (a thread finished its work)
waiting.wav - a brighter falling two-note chime (a pane waits for a decision)

Both: 16-bit mono PCM, 22050 Hz, about 0.3 s, a few kilobytes. Run from anywhere:
    python3 sounds/make-sounds.py
The output is deterministic, so re-running it reproduces the committed files byte for byte.
"""

import math
import os
import struct
import wave

RATE = 22050
PEAK = 0.45 * 32767


def note(freq, start, length, total):
    """One bell-like note: a sine with one soft overtone, fast attack, exponential decay."""
    out = [0.0] * total
    first = int(start * RATE)
    count = int(length * RATE)
    for i in range(count):
        t = i / RATE
        attack = min(1.0, t / 0.006)
        decay = math.exp(-t * 9.0)
        tone = math.sin(2 * math.pi * freq * t) + 0.25 * math.sin(2 * math.pi * 2 * freq * t)
        if first + i < total:
            out[first + i] = attack * decay * tone / 1.25
    return out


def chime(notes, seconds):
    total = int(seconds * RATE)
    mix = [0.0] * total
    for freq, start in notes:
        for i, v in enumerate(note(freq, start, seconds - start, total)):
            mix[i] += v
    # End on silence: a short linear fade so no click is heard.
    fade = int(0.02 * RATE)
    for i in range(fade):
        mix[total - 1 - i] *= i / fade
    loudest = max(abs(v) for v in mix) or 1.0
    return [int(round(v / loudest * PEAK)) for v in mix]


def write(path, samples):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(b"".join(struct.pack("<h", s) for s in samples))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    # C6 then E6: rising, calm.
    write(os.path.join(here, "done.wav"), chime([(1046.5, 0.0), (1318.5, 0.09)], 0.30))
    # A6 then E6: falling, asks for attention.
    write(os.path.join(here, "waiting.wav"), chime([(1760.0, 0.0), (1318.5, 0.08)], 0.30))


if __name__ == "__main__":
    main()
