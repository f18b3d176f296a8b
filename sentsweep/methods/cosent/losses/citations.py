"""BibTeX of the papers the CoSENT losses come from (each loss class names its own as ``citation``)."""

from __future__ import annotations

#: CoSENT (eqs. 10, 11; the equation numbers of every loss in this package are this paper's).
COSENT = """@article{huang2024cosent,
    title = {{CoSENT}: Consistent Sentence Embedding via Similarity Ranking},
    author = {Huang, Xiang and Peng, Hao and Zou, Dongcheng and Liu, Zhiwei and Li, Jianxin and Liu, Kay
              and Wu, Jia and Su, Jianlin and Yu, Philip S.},
    journal = {IEEE/ACM Transactions on Audio, Speech, and Language Processing},
    year = {2024},
    note = {The loss is Su's 2022 CoSENT, https://kexue.fm/archives/8847}
}"""

#: Sentence-BERT: the MSE-on-cosine (CosineSimilarityLoss) and softmax-classifier baselines.
SBERT = """@inproceedings{reimers2019sentencebert,
    title = {Sentence-{BERT}: Sentence Embeddings using {S}iamese {BERT}-Networks},
    author = {Reimers, Nils and Gurevych, Iryna},
    booktitle = {Proceedings of the 2019 Conference on Empirical Methods in Natural Language Processing},
    pages = {3982--3992},
    year = {2019},
    url = {https://arxiv.org/abs/1908.10084}
}"""

#: The contrastive (hinge) loss of eq. 1-2.
CONTRASTIVE = """@inproceedings{hadsell2006dimensionality,
    title = {Dimensionality Reduction by Learning an Invariant Mapping},
    author = {Hadsell, Raia and Chopra, Sumit and LeCun, Yann},
    booktitle = {2006 IEEE Computer Society Conference on Computer Vision and Pattern Recognition},
    volume = {2},
    pages = {1735--1742},
    year = {2006},
    doi = {10.1109/CVPR.2006.100}
}"""

#: The triplet loss of eq. 6.
TRIPLET = """@inproceedings{hoffer2015deep,
    title = {Deep Metric Learning Using Triplet Network},
    author = {Hoffer, Elad and Ailon, Nir},
    booktitle = {Similarity-Based Pattern Recognition (SIMBAD 2015)},
    series = {Lecture Notes in Computer Science},
    volume = {9370},
    pages = {84--92},
    year = {2015},
    doi = {10.1007/978-3-319-24261-3_7}
}"""
