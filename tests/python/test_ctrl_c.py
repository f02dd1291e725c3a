"""Ctrl-C on the CPU: SIGINT stops a kernel that would never end, and a compile."""

import os
import subprocess
import sys
import textwrap


import kjit


def test_ctrl_c_stops_a_cpu_kernel_that_would_never_end():
    # SIGINT stops the kernel, on the calling thread, on the pool, in region and in cooperative
    # mode, whether from outside the process or raised by the program, and Python raises
    # KeyboardInterrupt as it would; a call on another thread raises LaunchError; and in a child
    # forked after kernels ran. Each signal is sent once the kernel has written its output, so
    # it surely runs. A thread signalled inside malloc (which a kernel's thread-locals and
    # coroutine frames call too), stopped there, would leave a lock held, and the fork, which
    # takes every malloc lock, would wait for ever: one kernel spends most of its time there,
    # and with 16 pool threads and every case run twice, others are likely to be found there.
    program = textwrap.dedent('''
        import os, signal, threading, time
        import numpy as np, kjit
        signal.signal(signal.SIGINT, signal.default_int_handler)  # whatever the parent had
        LOOP = "unsigned i = blockIdx.x * blockDim.x + threadIdx.x; volatile float* o = out;"
        plain = kjit.cuda_kernel(name="forever", input_names=["x"], output_names=["out"],
                                 source=LOOP + "for (;;) o[i] = o[i] + x[i];")
        synced = kjit.cuda_kernel(name="forever_synced", input_names=["x"], output_names=["out"],
                                  source=LOOP + """
            __shared__ float s[64];
            for (;;) {
                s[threadIdx.x] = x[i];
                __syncthreads();
                o[i] = o[i] + s[(threadIdx.x + 1) % 64];
                __syncthreads();
            }""")
        shuffled = kjit.cuda_kernel(name="forever_shuffled", input_names=["x"],
                                    output_names=["out"], source=LOOP + """
            for (;;) o[i] = o[i] + __shfl_down_sync(0xffffffffu, x[i], 1);""")
        allocating = kjit.cuda_kernel(name="forever_allocating", input_names=["x"],
                                      output_names=["out"], source=LOOP + """
            for (;;) {
                volatile char* block = new char[1 << 16];  // beyond malloc's per-thread cache
                block[0] = 1;
                o[i] = o[i] + x[i] * block[0];
                delete[] block;
            }""")
        def call(kernel, out):
            kernel(inputs=[np.ones(out.size, np.float32)], output_shapes=[out.shape],
                   output_dtypes=[np.float32], grid=(out.size, 1, 1), threadgroup=(64, 1, 1),
                   device="cpu", outputs=[out])
        # Outputs in kjit's memory, which the kernels write in place (a small NumPy output is
        # written through a copy, seen only when the launch ends), watched through a view.
        def watched(n):
            return kjit.zeros((n,), kjit.float32, "cpu")
        def interrupt_once_running(out, send):
            deadline = time.monotonic() + 60
            seen = np.from_dlpack(out)
            while not seen.any() and time.monotonic() < deadline:
                time.sleep(0.001)
            send()
        from_outside = lambda: os.kill(os.getpid(), signal.SIGINT)
        raised = lambda: signal.raise_signal(signal.SIGINT)
        sleeping = kjit.cuda_kernel(name="forever_sleeping", input_names=["x"],
                                    output_names=["out"],
                                    header='extern "C" unsigned int sleep(unsigned int);',
                                    source=LOOP + """
            for (;;) {
                o[i] = x[i];
                sleep(1000);  // a library call that never returns for long
            }""")
        for kernel in (plain, synced, shuffled, allocating, sleeping):
            kernel.build(inputs=[(np.float32, 1)], output_dtypes=[np.float32])
        for kernel, n, send in 2 * [(plain, 1, from_outside), (plain, 1 << 15, from_outside),
                                    (synced, 64, from_outside), (synced, 1 << 15, from_outside),
                                    (shuffled, 1 << 15, from_outside), (plain, 1 << 15, raised),
                                    (allocating, 1 << 15, from_outside)]:
            out = watched(n)
            threading.Thread(target=interrupt_once_running, args=(out, send), daemon=True).start()
            try:
                call(kernel, out)
                print("returned", kernel.name, n)
            except KeyboardInterrupt:
                print("interrupted", kernel.name, n)
        # Two Ctrl-Cs at once (a double press, or one signal delivered twice) stop no thread inside
        # malloc either.
        double = lambda: (from_outside(), from_outside())
        for _ in range(40):
            out = watched(1 << 15)
            sender = threading.Thread(target=interrupt_once_running, args=(out, double),
                                      daemon=True)
            sender.start()
            try:
                call(allocating, out)
            except KeyboardInterrupt:
                pass
            try:  # the second may come once the first has stopped the kernel
                sender.join()
                time.sleep(0.001)
            except KeyboardInterrupt:
                pass
            if os.fork() == 0:  # which takes every malloc lock
                os._exit(0)
            os.wait()
        print("pressed twice at once")
        # Inside a library call for ever: a double press does not stop the kernel there; a
        # Ctrl-C a quarter of a second or more after it was found there does.
        spaced = lambda: (from_outside(), time.sleep(0.01), from_outside())  # not merged
        returned = threading.Event()
        def presses(out):
            interrupt_once_running(out, spaced)
            time.sleep(0.4)
            print("after a double press, still running:", not returned.is_set(), flush=True)
            while not returned.is_set():  # (a busy machine may find the thread outside late)
                from_outside()
                time.sleep(0.3)
        out = watched(1)
        presser = threading.Thread(target=presses, args=(out,), daemon=True)
        presser.start()
        try:
            call(sleeping, out)
        except KeyboardInterrupt:
            returned.set()
            print("interrupted", sleeping.name)
        try:  # a press may come as the kernel stops
            presser.join()
            time.sleep(0.001)
        except KeyboardInterrupt:
            pass
        failed = []
        out = watched(1 << 15)
        def elsewhere():
            try:
                call(plain, out)
            except kjit.LaunchError as e:
                failed.append(str(e).split(": ", 1)[1])
        thread = threading.Thread(target=elsewhere, daemon=True)
        thread.start()
        try:
            interrupt_once_running(out, from_outside)
            thread.join()
            time.sleep(30)
        except KeyboardInterrupt:
            print("main interrupted")
        thread.join()
        print("thread:", *failed)
        try:
            signal.raise_signal(signal.SIGINT)  # no kernel running: Python's handler as ever
            time.sleep(30)
        except KeyboardInterrupt:
            print("then interrupted")
        child = os.fork()  # the forking thread lives on in the child, with a new id
        if child == 0:
            out = watched(1)
            threading.Thread(target=interrupt_once_running, args=(out, from_outside),
                             daemon=True).start()
            try:
                call(plain, out)
            except KeyboardInterrupt:
                os._exit(0)
            os._exit(1)
        print("forked child interrupted", os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0)
        x = np.arange(1000, dtype=np.float32)
        twice = kjit.metal_kernel(name="twice", input_names=["x"], output_names=["out"],
                                  source="uint i = thread_position_in_grid.x; out[i] = 2 * x[i];")
        (out,) = twice(inputs=[x], output_shapes=[(1000,)], output_dtypes=[np.float32],
                       grid=(1000, 1, 1), threadgroup=(64, 1, 1), device="cpu")
        print("then", np.array_equal(out, 2 * x))
    ''')
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, KJIT_NUM_THREADS="16"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == 2 * [
        "interrupted forever 1", "interrupted forever 32768", "interrupted forever_synced 64",
        "interrupted forever_synced 32768", "interrupted forever_shuffled 32768",
        "interrupted forever 32768", "interrupted forever_allocating 32768"] + [
        "pressed twice at once", "after a double press, still running: True",
        "interrupted forever_sleeping", "main interrupted",
        "thread: SIGINT (Ctrl-C) stopped the kernel on the CPU. The outputs are incomplete",
        "then interrupted", "forked child interrupted True", "then True"], done.stdout


def test_ctrl_c_during_a_compile_raises_keyboard_interrupt(tmp_path):
    # The terminal's Ctrl-C signals the whole process group, the compiler with it. A compiler
    # slow to start (a wrapper that sleeps first) makes the compile long enough to signal.
    slow = tmp_path / "slow-c++"
    real = kjit._kjit.host_compiler()[0]
    slow.write_text(f"#!/bin/sh\nsleep 20\nexec {real} \"$@\"\n")
    slow.chmod(0o755)
    program = textwrap.dedent('''
        import os, signal, threading
        import numpy as np, kjit
        signal.signal(signal.SIGINT, signal.default_int_handler)  # whatever the parent had
        k = kjit.metal_kernel(name="never_built", input_names=["x"], output_names=["out"],
                              source="out[thread_position_in_grid.x] = 1.0f;")
        threading.Timer(1.0, os.killpg, (0, signal.SIGINT)).start()
        try:
            k(inputs=[np.ones(4, np.float32)], output_shapes=[(4,)], output_dtypes=[np.float32],
              grid=(4, 1, 1), threadgroup=(4, 1, 1), device="cpu")
        except KeyboardInterrupt:
            print("interrupted")
    ''')
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120, start_new_session=True,
                          env=dict(os.environ, KJIT_CXX=str(slow)))
    assert done.returncode == 0 and done.stdout == "interrupted\n", (done.stdout,
                                                                      done.stderr[-2000:])
