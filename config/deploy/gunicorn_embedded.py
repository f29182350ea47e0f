"""gunicorn settings of the embedded default (``make run``): one process that also runs the periodic work.

Everything of the production settings file (the access log that never writes a credential, the limits),
plus the hook that starts the in-process scheduler (``config.deploy.scheduler``) once the worker has loaded the
application. The command line sets the bind address, workers and threads.
"""

from config.deploy.gunicorn_conf import *  # noqa: F403


def post_worker_init(worker) -> None:
    from config.deploy.scheduler import start_embedded_scheduler

    start_embedded_scheduler()
