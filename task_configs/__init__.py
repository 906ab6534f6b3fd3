"""lm-eval task configs of metacog-eval (installed as ``metacog_tasks.task_configs``)."""
