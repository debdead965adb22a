"""The core: pure Python over llama.cpp. Nothing here imports Textual."""
