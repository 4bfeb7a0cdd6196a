"""execute: where tasks run, whatever they are.

    base        the executor protocol, and the Runner that names what workers do
    local       a pool of worker processes forked warm by a forkserver
    dask_cluster, dask_client   a Dask cluster, its client in a process of its own
    lifecycle   stop signals, the forkserver, the parent-death signal, the fast exit
    forkserved  what the forkserver imports first: quiet when the run leaves mid-start
    logship     log records across processes, filed by the run's process

May import: the foundation only (no sudoku, io, job, tools or cli): an executor runs
tasks through a Runner that the job names, and never knows what they do.
"""
