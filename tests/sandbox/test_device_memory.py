"""Outputs in GPU memory shared between two processes (grader.device_memory, the wire's TCW3
frames), on a machine without a GPU: the driver's part is played by a stand-in that puts
the bytes in a memory file, so that the frames, the refusals and the grader's way back
through host memory are tested here; the H200 runs the driver's part (`python -m scripts
wire --route gpu`, and every timed output a grading fetches)."""

from __future__ import annotations

import os
import socket
import time

import pytest
import torch

from grader import device_memory, protocol, tensor_buffer


class StandIn:
    """The driver's part: `shared` writes the parts into a memory file, `imported` reads
    them back (or refuses, as a driver would)."""

    def __init__(self, refuse: bool = False):
        self.refuse = refuse
        self.taken: list[int] = []  # the sizes asked for

    def encode_on_device(self, tensors):
        table, _ = tensor_buffer.encode(tensors)
        return table, [t.contiguous().reshape(-1).view(torch.uint8) for t in tensors.values()
                       if t.numel()]

    def shared(self, parts):
        data = b"".join(p.numpy().tobytes() for p in parts)
        fd = os.memfd_create("stand-in-gpu-memory")
        os.write(fd, data)
        return fd, len(data)

    def imported(self, fd, size):
        self.taken.append(size)
        if self.refuse:
            raise device_memory.Unshareable("cuMemImportFromShareableHandle failed (CUDA "
                                            "error 1)")
        data = os.pread(fd, size + 1, 0)
        if len(data) != size:
            raise device_memory.Unshareable("cuMemMap failed (CUDA error 1)")
        return torch.frombuffer(bytearray(data), dtype=torch.uint8)


@pytest.fixture
def gpu(monkeypatch):
    stand_in = StandIn()
    monkeypatch.setattr(tensor_buffer, "encode_on_device", stand_in.encode_on_device)
    monkeypatch.setattr(device_memory, "shared", stand_in.shared)
    monkeypatch.setattr(device_memory, "imported", stand_in.imported)
    return stand_in


def _fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_a_request_that_takes_gpu_memory_gets_its_tensors_through_it(gpu):
    a, b = socket.socketpair()
    big = torch.randn(1 << 19)  # 2 MiB: past SEALED_MIN
    before = _fds()
    protocol.send(a, {"id": 4}, {"output": big}, on_device=True)
    message = protocol.receive(b, time.monotonic() + 5, on_device=True)
    assert message.header == {"id": 4} and torch.equal(message.tensors["output"], big)
    assert gpu.taken == [big.nbytes]  # the table came on the socket, the bytes by the fd
    assert _fds() <= before  # the descriptor closed on both sides


def test_small_tensors_and_requests_that_do_not_ask_go_through_host_memory(gpu):
    a, b = socket.socketpair()
    protocol.send(a, {"id": 5}, {"output": torch.arange(10)}, on_device=True)
    assert torch.equal(protocol.receive(b, time.monotonic() + 5, on_device=True)
                       .tensors["output"], torch.arange(10))
    big = torch.randn(1 << 19)
    protocol.send(a, {"id": 6}, {"output": big})
    assert torch.equal(protocol.receive(b, time.monotonic() + 5).tensors["output"], big)
    assert gpu.taken == []


def test_gpu_memory_is_refused_where_the_request_does_not_take_it(gpu):
    """The child runs the student's code: it could send a frame of GPU memory to any request
    of its own. Only the replay's fetch takes one."""
    a, b = socket.socketpair()
    protocol.send(a, {"id": 7}, {"output": torch.randn(1 << 19)}, on_device=True)
    before = _fds()
    with pytest.raises(protocol.ProtocolError, match="does not take"):
        protocol.receive(b, time.monotonic() + 5)
    assert gpu.taken == [] and _fds() <= before


def test_gpu_memory_this_process_cannot_take_leaves_the_wire_in_step(gpu):
    """The driver refuses: NotShared, with its words, once the whole frame is read, so the
    same request can be asked again through host memory on the same connection."""
    gpu.refuse = True
    a, b = socket.socketpair()
    big = torch.randn(1 << 19)
    protocol.send(a, {"id": 8}, {"output": big}, on_device=True)
    with pytest.raises(protocol.NotShared, match="could not be taken here: .*CUDA error 1"):
        protocol.receive(b, time.monotonic() + 5, on_device=True)
    protocol.send(a, {"id": 9}, {"output": big})
    message = protocol.receive(b, time.monotonic() + 5, on_device=True)
    assert message.header == {"id": 9} and torch.equal(message.tensors["output"], big)


@pytest.mark.parametrize("table, blob_len, why", [
    ((1 << 40).to_bytes(8, "little"), 1 << 21, "a table past its buffer"),
    ((64).to_bytes(8, "little"), 40, "a table past its buffer"),  # the table is all of it
])
def test_a_gpu_memory_frame_whose_table_does_not_fit_is_malformed(gpu, table, blob_len, why):
    a, b = socket.socketpair()
    fd = os.memfd_create("x")
    socket.send_fds(a, [protocol.MAGIC_DEVICE + (2).to_bytes(4, "big")
                        + blob_len.to_bytes(8, "big")], [fd])
    os.close(fd)
    a.sendall(b"{}" + table)
    with pytest.raises(protocol.ProtocolError, match=why):
        protocol.receive(b, time.monotonic() + 5, on_device=True)
    assert gpu.taken == []


def test_a_gpu_memory_frame_over_the_request_s_limit_is_refused_before_it_is_taken(gpu):
    a, b = socket.socketpair()
    protocol.send(a, {"id": 10}, {"output": torch.randn(1 << 19)}, on_device=True)
    with pytest.raises(protocol.ProtocolError, match="over the 1000"):
        protocol.receive(b, time.monotonic() + 5, max_bytes=1000, on_device=True)
    assert gpu.taken == []


def test_the_bytes_on_the_device_are_read_as_their_table_says():
    """decode over bytes that are not in the buffer (GPU memory): views where a dtype's
    alignment allows, a copy where it does not, and the table alone in the buffer."""
    tensors = {"a": torch.arange(3, dtype=torch.uint8), "b": torch.randn(2, 3)}
    table, parts = tensor_buffer.encode(tensors)
    data = torch.frombuffer(bytearray(b"".join(bytes(p) for p in parts)), dtype=torch.uint8)
    back = tensor_buffer.decode(bytearray(table), data)
    assert torch.equal(back["a"], tensors["a"]) and torch.equal(back["b"], tensors["b"])
    with pytest.raises(tensor_buffer.Malformed, match="bytes after its table"):
        tensor_buffer.decode(bytearray(table + b"\0"), data)
    with pytest.raises(tensor_buffer.Malformed, match="bytes that no tensor holds"):
        tensor_buffer.decode(bytearray(table), torch.zeros(data.numel() + 1, dtype=torch.uint8))


def test_the_grader_fetches_through_host_memory_once_gpu_memory_was_refused(monkeypatch):
    """ReplayProcess.fetch asks for GPU memory on a GPU; refused (NotShared), it asks the
    same again through host memory, and does so from then on."""
    from pathlib import Path

    from grader.sandbox.replayer import ReplayProcess

    monkeypatch.setattr(ReplayProcess, "on_device", True)
    asked = []
    output = torch.arange(4.0)

    def ask(self, op, max_bytes, timeout=None, tensors=None, on_device=False, **args):
        asked.append((op, on_device, args))
        if on_device:
            raise protocol.NotShared("the reply's GPU memory could not be taken here")
        return protocol.Message({"value": {"device": "cuda"}}, {"output": output})

    monkeypatch.setattr(ReplayProcess, "_ask", ask)
    replay = ReplayProcess(Path("kernel.py"), "f", "cuda")
    assert torch.equal(replay.fetch(3, output.nbytes), output)
    assert torch.equal(replay.fetch(1, output.nbytes), output)
    assert asked == [("fetch", True, {"index": 3}), ("fetch", False, {"index": 3}),
                     ("fetch", False, {"index": 1})]
    assert ReplayProcess.on_device is False
