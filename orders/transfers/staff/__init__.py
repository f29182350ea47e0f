"""Staff: the case actions' writes (``services``) and the pages' reads (``selectors``), the admin in one package
(``admin``), the seller's question by e-mail and the platform templates' report and writing form."""
