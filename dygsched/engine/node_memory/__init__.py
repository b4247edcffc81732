"""Memory-based continuous-time training over ranks: the one-process reference, DepCache, DepComm and Sven."""
