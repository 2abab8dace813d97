"""nbconvert's settings for the site build (the docs hook points JUPYTER_CONFIG_DIR here).

The notebooks' kernels talk to the build over local sockets (IPC) rather than TCP on 127.0.0.1: nothing listens on
a port, and ipykernel has no reason to warn, once per page, that its TCP traffic is unencrypted. The sockets lie in
a directory of the build's own (the hook names it in BATCHING_KERNEL_IPC): by default they would be files named
kernel-ipc-N in the working directory, where a second build of the same checkout, or the sockets a killed build
left, can hand one page's kernel another's messages ("Invalid Signature").
"""

import os

c = get_config()  # noqa: F821 (nbconvert's config loader provides it)
c.KernelManager.transport = "ipc"
if os.environ.get("BATCHING_KERNEL_IPC"):
    c.KernelManager.ip = os.environ["BATCHING_KERNEL_IPC"]
