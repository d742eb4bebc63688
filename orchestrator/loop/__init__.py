"""The build loop and what a run is made of: phases in turn, reflection, learning, records."""
