"""Tasks as runs use them: each task kind's run part (``kinds``), the arrays a results
folder keeps of a task (``arrays``) and the disk cache of expensive tasks (``cache``)."""
