"""Start-up hook for the real-backend tests: with LMMS_TASKS_GENERATE_TRACE set, trace every
`generate` call of this process (see lmms_tasks.utils.testing.generate_trace). Does nothing otherwise.
This directory is not a package; tests put it on PYTHONPATH."""

import os

if os.environ.get("LMMS_TASKS_GENERATE_TRACE"):
    from lmms_tasks.utils.testing.generate_trace import install

    install(os.environ["LMMS_TASKS_GENERATE_TRACE"])
