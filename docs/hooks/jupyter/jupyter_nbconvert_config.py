"""nbconvert's settings for the site build (the docs hook points JUPYTER_CONFIG_DIR here).

The notebooks' kernels talk to the build over local sockets (IPC) rather than TCP on 127.0.0.1: nothing listens on
a port, and ipykernel has no reason to warn, once per page, that its TCP traffic is unencrypted.
"""

c = get_config()  # noqa: F821 (nbconvert's config loader provides it)
c.KernelManager.transport = "ipc"
