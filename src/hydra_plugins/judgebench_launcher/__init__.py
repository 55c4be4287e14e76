"""judgebench's submitit launchers (conf/hydra/launcher/slurm.yaml, slurm_gpu.yaml, local_parallel.yaml).

Hydra instantiates launchers only from the ``hydra_plugins`` package, so the classes live here; the
logic (wait for every job, report the ones that died without a result) is
judgebench.hydra_callbacks.WaitForAllJobs.
"""

from hydra_plugins.hydra_submitit_launcher.submitit_launcher import LocalLauncher, SlurmLauncher

from judgebench.hydra_callbacks import WaitForAllJobs


class SubmititSlurmLauncher(WaitForAllJobs, SlurmLauncher):
    _EXECUTOR = "slurm"


class SubmititLocalLauncher(WaitForAllJobs, LocalLauncher):
    _EXECUTOR = "local"
