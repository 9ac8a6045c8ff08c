// Progressive enhancement only: every page reads completely without JavaScript.
document.documentElement.classList.add("js");
