"""Task generators: the Planner, Generator and Refiner protocols and their backends."""
