"""What every stage shares, and no stage owns: problems (the one-line messages), the build
cache, the worker processes and the parallel runner, and the folders the builder must never
touch. It imports no other part of the builder."""
