"""How fast an output crosses the wire: one tensor sent between two processes, as the replay
sends a timed output the grader fetches.

A trial fetches outputs of up to 256 MB from the replay's process and checks them
(grader.speed.trial); the wire (grader.protocol, grader.tensor_buffer) carries them, in GPU
memory shared between the processes (grader.device_memory, where there is a GPU), through
the socket or, from tensor_buffer.SEALED_MIN bytes, in a sealed memory file. A process
started here sends the same tensor ROUNDS times (from the GPU where there is one, as the
replay does), each time this one asks; this one receives it and copies it to the device, as
the grader does. One row per round: the time from asking to a received message, of it the
sender's own (staging, writing, sending), the copy to the device, and whether the bytes
arrived whole. The first round pays for what is allocated once (the pinned staging buffer).

Usage:  python -m scripts wire [--megabytes MB] [--rounds N] [--route ROUTE]
        ROUTE: gpu (GPU memory where the GPU takes it, as a fetched output goes), sealed (a
        sealed memory file, the default), socket (every buffer through the socket)
"""

from __future__ import annotations

import argparse
import multiprocessing
import socket
import sys
import time

import torch

from grader import device_memory, protocol, tensor_buffer


def _send(sock: socket.socket, megabytes: int, rounds: int, device: str, sealed_min: int,
          on_device: bool) -> None:
    tensor_buffer.SEALED_MIN = sealed_min
    tensor = torch.randn(megabytes << 18, device=device)  # float32: MB << 20 bytes
    total = float(tensor.double().sum())
    if device == "cuda":
        torch.cuda.synchronize()
    sock.sendall(b"r")  # ready: its start-up is not a round's
    for _ in range(rounds):
        sock.recv(1)  # asked
        start = time.perf_counter()
        protocol.send(sock, {"sum": total}, {"output": tensor}, on_device=on_device)
        if on_device and device_memory.refused:
            print(f"# not sent in GPU memory: {device_memory.refused}", flush=True)
        sock.sendall(f"{(time.perf_counter() - start) * 1e3:12.3f}".encode())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--route", choices=("gpu", "sealed", "socket"), default="sealed")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    sealed_min = 1 << 62 if args.route == "socket" else tensor_buffer.SEALED_MIN
    on_device = args.route == "gpu"
    ours, theirs = socket.socketpair()
    spawn = multiprocessing.get_context("spawn")  # a process of its own, CUDA made there
    sender = spawn.Process(target=_send, args=(theirs, args.megabytes, args.rounds, device,
                                               sealed_min, on_device), daemon=True)
    sender.start()
    routes = {"gpu": "in GPU memory where it can be shared", "socket": "through the socket",
              "sealed": "in a sealed memory file"}
    print(f"# {args.megabytes} MB of float32 from a {device} tensor, {routes[args.route]}")
    print("| round | asked to received, ms | of it sending, ms | to the device, ms | whole |")
    print("| --- | --- | --- | --- | --- |")
    whole_every_time = True
    ours.recv(1)  # the sender is ready
    for round_ in range(1, args.rounds + 1):
        ours.sendall(b"g")
        start = time.perf_counter()
        message = protocol.receive(ours, time.monotonic() + 120, max_bytes=1 << 34,
                                   on_device=on_device)
        received = time.perf_counter()
        arrived = message.tensors["output"].to(device)
        if device == "cuda":
            torch.cuda.synchronize()
        copied = time.perf_counter()
        sent_ms = float(ours.recv(12).decode())
        where = message.tensors["output"].device.type
        whole = abs(float(arrived.double().sum()) - message.header["sum"]) < 1e-3 and (
            where == device or args.route != "gpu")  # asked for GPU memory: it came so
        whole_every_time &= whole
        print(f"| {round_} | {(received - start) * 1e3:.1f} | {sent_ms:.1f} | "
              f"{(copied - received) * 1e3:.1f} | {'yes' if whole else 'NO'} ({where}) |",
              flush=True)
    sender.join()
    return 0 if whole_every_time and sender.exitcode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
