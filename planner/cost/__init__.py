"""Cost per training run: named cost lines, spot and billing arithmetic, ranking, Pareto front, comparison."""
